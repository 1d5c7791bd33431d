//! Package tools: init, create (from a project or a source), validate, pack and publish.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool, mirror_registry};
use crate::catalog::{NewPackage, PackageMember};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::archive;
pub use crate::packages::build::IncludedArtifact;
use crate::packages::build::{
    Built, Selection, assemble, check_manifest, folder_package_name, gather_from_project, gather_from_source,
    write_package_dir,
};
use crate::packages::layout::package_path;
use crate::packages::manifest::{
    self, Issue, MANIFEST_FILE, Manifest, ManifestArtifact, ManifestArtifacts, Provenance, artifact_file_name,
    check_package_name,
};
use crate::packages::registry::Registry;
use crate::packages::validate::{archive_file_name, pack_dir, validate_archive, validate_archive_bytes, validate_dir};
use crate::project;
use crate::scan::{ArtifactKind, Platform};

const DEFAULT_VERSION: &str = "0.1.0";

// ---------------------------------------------------------------- init

/// Input of `aam_init_package`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgInitInput {
    /// Package name (`name` or `@scope/name`); default: the folder's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Folder to create the package in; default: `./<name>` when a name is given, else the current folder.
    #[serde(default)]
    pub dir: Option<String>,
    /// Version (default `0.1.0`).
    #[serde(default)]
    pub version: Option<String>,
    /// Description (default: a placeholder to edit).
    #[serde(default)]
    pub description: Option<String>,
    /// Author.
    #[serde(default)]
    pub author: Option<String>,
    /// License (SPDX).
    #[serde(default)]
    pub license: Option<String>,
}

/// Output of `aam_init_package`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgInitOutput {
    /// The manifest written.
    pub manifest_path: String,
    /// Package name.
    pub package_name: String,
    /// Version.
    pub version: String,
    /// Files created, relative to the package folder.
    pub files: Vec<String>,
}

/// Scaffolds a new package with one example skill.
pub struct PkgInit;

impl Tool for PkgInit {
    const NAME: &'static str = "aam_init_package";
    const TITLE: &'static str = "Scaffold a package";
    const DESCRIPTION: &'static str = "Create a new package folder: an `aam.yaml` manifest and one example skill to edit. Fails if the folder already has an `aam.yaml`. Next: add artifacts, then `aam_validate`, pack and publish.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::ManifestInvalid, ErrorCode::Conflict];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "scaffold a package",
            input: r#"{"name": "starter-kit"}"#,
            expect: Expect::Output(
                r#"{"package_name": "starter-kit", "files": ["aam.yaml", "skills/starter-kit/SKILL.md"]}"#,
            ),
        },
        Example {
            title: "a name that is not valid",
            input: r#"{"name": "Bad_Name"}"#,
            expect: Expect::Error(ErrorCode::ManifestInvalid),
        },
    ];
    type Input = PkgInitInput;
    type Output = PkgInitOutput;

    fn run(ctx: &Context, input: PkgInitInput) -> Result<PkgInitOutput> {
        let dir = match (&input.dir, &input.name) {
            (Some(dir), _) => ctx.path(dir)?,
            (None, Some(name)) => ctx.path(name.rsplit('/').next().unwrap_or(name))?,
            (None, None) => ctx.path(".")?,
        };
        let name = match input.name {
            Some(name) => name,
            None => folder_package_name(&dir),
        };
        check_package_name(&name).map_err(invalid_manifest_field)?;
        let version = input.version.unwrap_or_else(|| DEFAULT_VERSION.to_string());
        semver::Version::parse(&version)
            .map_err(|e| Error::invalid_argument(format!("`{version}` is not a semantic version: {e}")))?;
        let manifest_path = dir.join(MANIFEST_FILE);
        if manifest_path.exists() {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("`{}` already exists", manifest_path.display()),
            )
            .with_hint("edit it, or pass another folder"));
        }
        let skill = artifact_file_name(name.rsplit('/').next().unwrap_or(&name));
        let skill_path = package_path(ArtifactKind::Skill, &skill);
        let skill_text = format!(
            "---\nname: {skill}\ndescription: Describe when an agent should use this skill.\n---\n\n# {skill}\n\nWrite the instructions here.\n"
        );
        let manifest = Manifest {
            name: name.clone(),
            version: version.clone(),
            description: input
                .description
                .unwrap_or_else(|| "Describe what this package gives an agent.".to_string()),
            author: input.author,
            license: input.license,
            repository: None,
            homepage: None,
            keywords: Vec::new(),
            artifacts: ManifestArtifacts {
                skills: vec![ManifestArtifact {
                    name: skill.clone(),
                    path: skill_path.clone(),
                    description: Some("An example skill to edit or replace".to_string()),
                }],
                ..Default::default()
            },
            dependencies: BTreeMap::new(),
            platforms: Vec::new(),
            provenance: None,
            file_checksums: None,
        };
        check_manifest(&manifest)?;
        let skill_file = format!("{skill_path}/SKILL.md");
        crate::atomic::write_file(&dir.join(&skill_file), skill_text.as_bytes())?;
        crate::atomic::write_file(&manifest_path, manifest::to_yaml(&manifest).as_bytes())?;
        Ok(PkgInitOutput {
            manifest_path: manifest_path.display().to_string(),
            package_name: name,
            version,
            files: vec![MANIFEST_FILE.to_string(), skill_file],
        })
    }
}

// ---------------------------------------------------------------- create

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
        ErrorCode::ManifestInvalid,
        ErrorCode::Conflict,
        ErrorCode::CacheCorrupted,
        ErrorCode::SourceFileTooLarge,
    ];
    const CONSTRAINTS: &'static [&'static str] = &["the output folder must not exist or be empty"];
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
                    None => project::root(&ctx.cwd),
                };
                let root = root.canonicalize().map_err(|e| Error::io("read", &root, e))?;
                gather_from_project(&root, &Selection::from(&input))?
            }
        };
        let name = input.name.clone().unwrap_or_else(|| gathered.default_name.clone());
        check_package_name(&name).map_err(invalid_manifest_field)?;
        let version = input.version.clone().unwrap_or_else(|| DEFAULT_VERSION.to_string());
        let bare = name.rsplit('/').next().unwrap_or(&name).to_string();
        let output_dir = match &input.output_dir {
            Some(dir) => ctx.path(dir)?,
            None => ctx.path(&bare)?,
        };
        let occupied = std::fs::read_dir(&output_dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false);
        if occupied {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("`{}` exists and is not empty", output_dir.display()),
            )
            .with_hint("pass `--output-dir` with a new folder, or remove that one"));
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

fn invalid_manifest_field(message: String) -> Error {
    Error::new(ErrorCode::ManifestInvalid, message).with_hint("pass a valid `--name`")
}

// ---------------------------------------------------------------- validate

/// Input of `aam_validate`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgValidateInput {
    /// A package folder, its `aam.yaml`, or a `.aam` archive (default: the current folder).
    #[serde(default)]
    pub path: Option<String>,
}

/// Output of `aam_validate`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgValidateOutput {
    /// Whether there are no errors.
    pub valid: bool,
    /// Name, when readable.
    pub package_name: Option<String>,
    /// Version, when readable.
    pub package_version: Option<String>,
    /// Every problem that makes it invalid, with its field.
    pub errors: Vec<Issue>,
    /// Problems worth fixing that do not make it invalid.
    pub warnings: Vec<Issue>,
    /// Artifacts listed.
    pub artifact_count: u64,
}

/// Checks a package and reports every problem at once.
pub struct PkgValidate;

impl Tool for PkgValidate {
    const NAME: &'static str = "aam_validate";
    const TITLE: &'static str = "Validate a package";
    const DESCRIPTION: &'static str = "Check a package folder, its aam.yaml or a .aam archive: every manifest field, that listed artifacts exist, and that file checksums match. Returns all errors and warnings at once, each with its field path; `valid` is false when there is any error. Next: fix and run again, then pack.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::ManifestInvalid, ErrorCode::ArchiveInvalid];
    const CONSTRAINTS: &'static [&'static str] =
        &["paths must be inside the project or AAM_HOME when called by a machine front end"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a package folder",
            input: r#"{"path": "review-kit"}"#,
            expect: Expect::Output(r#"{"valid": true, "package_name": "review-kit", "errors": []}"#),
        },
        Example {
            title: "a path that does not exist",
            input: r#"{"path": "nowhere"}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = PkgValidateInput;
    type Output = PkgValidateOutput;

    fn run(ctx: &Context, input: PkgValidateInput) -> Result<PkgValidateOutput> {
        let path = ctx.path(input.path.as_deref().unwrap_or("."))?;
        if !path.exists() {
            return Err(Error::invalid_argument(format!("`{}` does not exist", path.display()))
                .with_hint("pass a package folder, its aam.yaml or a .aam archive"));
        }
        let (checked, extra_errors, extra_warnings) = if path.is_file() && path.extension().is_some_and(|e| e == "aam")
        {
            validate_archive(&std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?)?
        } else {
            let dir = if path.is_file() {
                path.parent().unwrap_or(&path).to_path_buf()
            } else {
                path.clone()
            };
            validate_dir(&dir)?
        };
        let mut errors = checked.errors;
        errors.extend(extra_errors);
        let mut warnings = checked.warnings;
        warnings.extend(extra_warnings);
        Ok(PkgValidateOutput {
            valid: errors.is_empty(),
            package_name: checked.name,
            package_version: checked.version,
            errors,
            warnings,
            artifact_count: checked.artifact_count as u64,
        })
    }
}

// ---------------------------------------------------------------- pack

/// Input of `aam_pack`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgPackInput {
    /// Package folder (default: the current folder).
    #[serde(default)]
    pub path: Option<String>,
    /// Archive to write (default: `dist/<name>-<version>.aam` in the package folder).
    #[serde(default)]
    pub output: Option<String>,
}

/// Output of `aam_pack`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgPackOutput {
    /// The archive written.
    pub archive: String,
    /// Package name.
    pub package_name: String,
    /// Version.
    pub version: String,
    /// Archive size in bytes.
    pub size: u64,
    /// blake3 of the archive (hex).
    pub blake3: String,
    /// Files in the archive, the manifest included.
    pub file_count: u64,
}

/// Packs a package folder into a reproducible archive.
pub struct PkgPack;

impl Tool for PkgPack {
    const NAME: &'static str = "aam_pack";
    const TITLE: &'static str = "Pack a package";
    const DESCRIPTION: &'static str = "Pack a valid package folder into a reproducible `.aam` archive (sorted entries, fixed metadata: the same files give the same bytes), with checksums recomputed over exactly what the archive holds. Hidden files, build folders and earlier archives are left out. Returns the archive path, size and blake3. Next: `aam_publish`.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::ManifestInvalid, ErrorCode::ArchiveInvalid];
    const CONSTRAINTS: &'static [&'static str] = &[
        "archives are reproducible: same files, same bytes",
        "at most 64 MiB and 20,000 entries",
    ];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "pack a package folder",
        input: r#"{"path": "team-rules"}"#,
        expect: Expect::Output(r#"{"package_name": "team-rules", "version": "0.1.0", "file_count": 2}"#),
    }];
    type Input = PkgPackInput;
    type Output = PkgPackOutput;

    fn run(ctx: &Context, input: PkgPackInput) -> Result<PkgPackOutput> {
        let dir = ctx.path(input.path.as_deref().unwrap_or("."))?;
        let (bytes, manifest, file_count) = pack_dir(&dir)?;
        let output = match &input.output {
            Some(out) => ctx.path(out)?,
            None => dir.join("dist").join(archive_file_name(&manifest)),
        };
        ctx.cancel.check()?;
        let (size, blake3) = archive::write_archive(&output, &bytes)?;
        Ok(PkgPackOutput {
            archive: output.display().to_string(),
            package_name: manifest.name,
            version: manifest.version,
            size,
            blake3,
            file_count,
        })
    }
}

// ---------------------------------------------------------------- publish

/// Input of `aam_publish`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgPublishInput {
    /// A `.aam` archive, or a package folder to pack first (default: the current folder).
    #[serde(default)]
    pub archive: Option<String>,
    /// Registry name (default: the default registry).
    #[serde(default)]
    pub registry: Option<String>,
    /// Dist-tag to point at this version (default `latest`).
    #[serde(default)]
    pub tag: Option<String>,
    /// Check everything, publish nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Output of `aam_publish`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgPublishOutput {
    /// Package name.
    pub package_name: String,
    /// Version.
    pub version: String,
    /// Registry it went to.
    pub registry: String,
    /// Dist-tag set.
    pub tag: String,
    /// Archive path inside the registry.
    pub archive: String,
    /// blake3 of the archive (hex).
    pub checksum: String,
    /// Archive size in bytes.
    pub size: u64,
    /// Artifact types it holds.
    pub artifact_types: Vec<ArtifactKind>,
    /// Whether nothing was published.
    pub dry_run: bool,
}

/// Publishes a package version to a registry.
pub struct PkgPublish;

impl Tool for PkgPublish {
    const NAME: &'static str = "aam_publish";
    const TITLE: &'static str = "Publish a package";
    const DESCRIPTION: &'static str = "Publish a `.aam` archive (or a package folder, packed first) to a registry. Versions are immutable: publishing one that exists fails with AAM_VERSION_EXISTS. Sets a dist-tag (default `latest`) and makes the package searchable. Returns the stored archive's path, checksum and size.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::VersionExists,
        ErrorCode::RegistryNotFound,
        ErrorCode::RegistryInvalid,
        ErrorCode::ManifestInvalid,
        ErrorCode::ArchiveInvalid,
    ];
    const CONSTRAINTS: &'static [&'static str] = &["versions are immutable"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "publish a package folder",
            input: r#"{"archive": "team-rules"}"#,
            expect: Expect::Output(r#"{"package_name": "team-rules", "version": "0.1.0", "tag": "latest"}"#),
        },
        Example {
            title: "a version that is already published",
            input: r#"{"archive": "review-kit"}"#,
            expect: Expect::Error(ErrorCode::VersionExists),
        },
    ];
    type Input = PkgPublishInput;
    type Output = PkgPublishOutput;

    fn run(ctx: &Context, input: PkgPublishInput) -> Result<PkgPublishOutput> {
        let target = ctx.path(input.archive.as_deref().unwrap_or("."))?;
        let bytes = if target.is_dir() {
            pack_dir(&target)?.0
        } else {
            std::fs::read(&target).map_err(|e| Error::io("read", &target, e))?
        };
        let manifest = validate_archive_bytes(&bytes)?;
        let tag = input.tag.unwrap_or_else(|| "latest".to_string());
        crate::sources::spec::validate_ref(&tag)
            .map_err(|_| Error::invalid_argument(format!("`{tag}` is not a valid tag")))?;
        let settings = ctx.home.load_settings()?;
        let setting = settings.registry(input.registry.as_deref())?.clone();
        let registry = Registry::configured(&setting)?;
        ctx.cancel.check()?;
        let entry = registry.publish(&bytes, &manifest, &tag, input.dry_run)?;
        if !input.dry_run {
            let mut catalog = ctx.catalog()?;
            mirror_registry(ctx, &mut catalog, &setting.name, &registry)?;
        }
        Ok(PkgPublishOutput {
            package_name: manifest.name,
            version: manifest.version,
            registry: setting.name,
            tag,
            archive: entry.archive,
            checksum: entry.checksum,
            size: entry.size,
            artifact_types: entry.artifact_types,
            dry_run: input.dry_run,
        })
    }
}
