//! Package tools: init, create (from a project or a source), validate, pack and publish.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::registries::{mirror_registry, open_registry};
use super::{Context, Example, Expect, Risk, Tool};
use crate::catalog::{Catalog, ListedArtifact, NewPackage, PackageMember, now_timestamp};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::archive;
use crate::packages::layout::{self, package_path};
use crate::packages::manifest::{
    self, FileChecksums, Issue, MANIFEST_FILE, Manifest, ManifestArtifact, ManifestArtifacts, Provenance,
    artifact_file_name, check_package_name,
};
use crate::project;
use crate::scan::{ArtifactKind, Platform};
use crate::sources::git::{GitCache, Oid};
use crate::sources::index::Snapshot;

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

/// A package name made from a folder's name.
fn folder_package_name(dir: &Path) -> String {
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    manifest::suggest_package_name(&folder)
        .or_else(|| check_package_name(&folder).ok().map(|_| folder.clone()))
        .unwrap_or_else(|| "package".to_string())
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

/// One artifact placed in a package.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IncludedArtifact {
    /// Name inside the package.
    pub name: String,
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Path inside the package.
    pub path: String,
    /// Where it came from (project or repository path).
    pub source_path: String,
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
            Some(source) => gather_from_source(ctx, &catalog, source, &Selection::from(&input))?,
            None => gather_from_project(ctx, &input)?,
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

/// Which artifacts to take.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selection {
    /// Every one.
    pub all: bool,
    /// Every one of these types.
    pub types: Vec<ArtifactKind>,
    /// These names or paths.
    pub artifacts: Vec<String>,
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

/// A package assembled in memory: its manifest and files.
pub(crate) struct Built {
    /// The manifest (with checksums of `files`).
    pub manifest: Manifest,
    /// Package path to (bytes, executable); `aam.yaml` not included.
    pub files: BTreeMap<String, (Vec<u8>, bool)>,
    /// What went in.
    pub included: Vec<IncludedArtifact>,
}

/// Lays gathered artifacts out as a package named `name`.
pub(crate) fn assemble(
    gathered: &Gathered,
    name: &str,
    version: &str,
    description: Option<String>,
    platforms: Vec<String>,
) -> Result<Built> {
    let mut files: BTreeMap<String, (Vec<u8>, bool)> = BTreeMap::new();
    let mut artifacts = ManifestArtifacts::default();
    let mut included = Vec::new();
    for chosen in &gathered.chosen {
        let taken: Vec<&str> = artifacts.of(chosen.kind).iter().map(|a| a.name.as_str()).collect();
        let file_name = unique_name(&artifact_file_name(&chosen.name), &taken);
        let path = package_path(chosen.kind, &file_name);
        for (relative, bytes, executable) in &chosen.files {
            let target = match chosen.kind {
                ArtifactKind::Skill => format!("{path}/{relative}"),
                _ => path.clone(),
            };
            files.insert(target, (bytes.clone(), *executable));
        }
        artifacts.of_mut(chosen.kind).push(ManifestArtifact {
            name: file_name.clone(),
            path: path.clone(),
            description: chosen.description.clone(),
        });
        included.push(IncludedArtifact {
            name: file_name,
            kind: chosen.kind,
            path,
            source_path: chosen.source_path.clone(),
        });
    }
    let checksums: BTreeMap<String, String> = files
        .iter()
        .map(|(path, (bytes, _))| (path.clone(), blake3::hash(bytes).to_hex().to_string()))
        .collect();
    let manifest = Manifest {
        name: name.to_string(),
        version: version.to_string(),
        description: description.unwrap_or_else(|| gathered.default_description(&included)),
        author: None,
        license: None,
        repository: gathered
            .provenance
            .source_url
            .clone()
            .filter(|u| u.starts_with("https://")),
        homepage: None,
        keywords: Vec::new(),
        artifacts,
        dependencies: BTreeMap::new(),
        platforms,
        provenance: Some(gathered.provenance.clone()),
        file_checksums: Some(FileChecksums {
            algorithm: "blake3".to_string(),
            files: checksums,
        }),
    };
    check_manifest(&manifest)?;
    Ok(Built {
        manifest,
        files,
        included,
    })
}

/// An artifact chosen for a package, with its files read.
pub(crate) struct Chosen {
    pub kind: ArtifactKind,
    pub name: String,
    description: Option<String>,
    /// Path in the project or repository.
    pub source_path: String,
    /// The catalog artifact, for source artifacts.
    pub artifact_id: Option<i64>,
    /// (path relative to the artifact, bytes, executable).
    files: Vec<(String, Vec<u8>, bool)>,
}

pub(crate) struct Gathered {
    pub chosen: Vec<Chosen>,
    pub provenance: Provenance,
    pub default_name: String,
    origin_label: String,
    project_root: Option<String>,
}

impl Gathered {
    fn default_description(&self, included: &[IncludedArtifact]) -> String {
        let names: Vec<&str> = included.iter().map(|a| a.name.as_str()).collect();
        let mut text = format!(
            "{} from {}: {}",
            plural(included.len(), "artifact"),
            self.origin_label,
            names.join(", ")
        );
        if text.chars().count() > manifest::MAX_DESCRIPTION {
            text = text.chars().take(manifest::MAX_DESCRIPTION - 1).collect::<String>() + "…";
        }
        text
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Up to five of `known`, closest first, that look like one of `wanted`.
fn closest<'k>(wanted: &[String], known: &[&'k str]) -> Vec<&'k str> {
    let mut scored: Vec<(f64, &str)> = known
        .iter()
        .map(|k| {
            let score = wanted
                .iter()
                .map(|w| strsim::jaro_winkler(&w.to_lowercase(), &k.to_lowercase()))
                .fold(0.0, f64::max);
            (score, *k)
        })
        .filter(|(score, _)| *score >= 0.75)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let mut names: Vec<&str> = scored.into_iter().map(|(_, k)| k).collect();
    names.dedup();
    names.truncate(5);
    names
}

/// Picks artifacts by `all`, `types` and names (or paths); unknown names are an
/// error naming each of them.
fn choose<T>(items: Vec<T>, input: &Selection, key: impl Fn(&T) -> (ArtifactKind, &str, &str)) -> Result<Vec<T>> {
    let mut unknown: Vec<String> = input
        .artifacts
        .iter()
        .filter(|wanted| {
            !items
                .iter()
                .any(|i| key(i).1 == wanted.as_str() || key(i).2 == wanted.as_str())
        })
        .cloned()
        .collect();
    unknown.dedup();
    if !unknown.is_empty() {
        let names: Vec<String> = unknown.iter().map(|n| format!("`{n}`")).collect();
        let known: Vec<&str> = items.iter().map(|i| key(i).1).collect();
        let close = closest(&unknown, &known);
        let hint = if close.is_empty() {
            format!(
                "no name is close among its {}; `aam source scan` lists them, `aam search` finds them",
                plural(known.len(), "artifact")
            )
        } else {
            let close: Vec<String> = close.iter().map(|n| format!("`{n}`")).collect();
            format!(
                "did you mean {}? (`aam source scan` lists all {})",
                close.join(", "),
                plural(known.len(), "artifact")
            )
        };
        return Err(Error::new(
            ErrorCode::ArtifactNotFound,
            format!("no artifact named {}", names.join(", ")),
        )
        .with_hint(hint));
    }
    Ok(items
        .into_iter()
        .filter(|i| {
            let (kind, name, path) = key(i);
            input.all || input.types.contains(&kind) || input.artifacts.iter().any(|w| w == name || w == path)
        })
        .collect())
}

fn gather_from_project(ctx: &Context, input: &PkgCreateInput) -> Result<Gathered> {
    let selection = Selection::from(input);
    let root = match &input.path {
        Some(path) => ctx.path(path)?,
        None => project::root(&ctx.cwd),
    };
    let root = root.canonicalize().map_err(|e| Error::io("read", &root, e))?;
    let found = project::artifacts(&root)?;
    if found.is_empty() {
        return Err(Error::invalid_argument(format!("no artifacts found in `{}`", root.display()))
            .with_hint("artifacts are skills (`SKILL.md` folders), agents, prompts and instructions; see `aam source candidates --source local`"));
    }
    let picked = choose(found, &selection, |a| (a.kind, a.name.as_str(), a.path.as_str()))?;
    let mut chosen = Vec::new();
    for artifact in picked {
        let mut files = Vec::new();
        for file in &artifact.files {
            let path = root.join(file);
            let bytes = std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?;
            let relative = match artifact.kind {
                ArtifactKind::Skill if artifact.path.is_empty() => file.clone(),
                ArtifactKind::Skill => file[artifact.path.len() + 1..].to_string(),
                _ => String::new(),
            };
            use std::os::unix::fs::PermissionsExt;
            let executable = std::fs::metadata(&path)
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false);
            files.push((relative, bytes, executable));
        }
        chosen.push(Chosen {
            kind: artifact.kind,
            name: artifact.name,
            description: artifact.description,
            source_path: artifact.path,
            artifact_id: None,
            files,
        });
    }
    let folder = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Gathered {
        chosen,
        provenance: Provenance {
            source_type: Some("local_project".to_string()),
            source_url: Some(format!("file://{}", root.display())),
            source_ref: None,
            source_path: None,
            source_commit: crate::sources::git::head_commit(&root).map(|c| c.to_string()),
            fetched_at: Some(now_timestamp()),
        },
        default_name: folder_package_name(&root),
        origin_label: format!("project {folder}"),
        project_root: Some(root.display().to_string()),
    })
}

/// Reads the chosen artifacts of a source from its cached git objects at the indexed commit.
pub(crate) fn gather_from_source(
    ctx: &Context,
    catalog: &Catalog,
    source_name: &str,
    input: &Selection,
) -> Result<Gathered> {
    let source = super::sources::find_source(catalog, source_name)?;
    let Some(commit) = source.head_commit.clone() else {
        return Err(super::sources::not_indexed(&source.name));
    };
    let listed = catalog.list_page(
        &crate::catalog::ListFilter {
            source_ids: vec![source.id],
            ..Default::default()
        },
        None,
        usize::MAX >> 1,
    )?;
    let picked: Vec<ListedArtifact> = choose(listed, input, |a| (a.kind, a.name.as_str(), a.path.as_str()))?;
    let cache = GitCache::open(&ctx.home.git_cache_dir().join(&source.cache_key))
        .map_err(|e| e.with_hint(format!("run `aam source update {}` to fetch it again", source.name)))?;
    let commit_id = Oid::from_hex(commit.as_bytes()).map_err(|_| Error::internal("stored commit id is not hex"))?;
    if !cache.has_commit(commit_id) {
        return Err(Error::new(
            ErrorCode::CacheCorrupted,
            format!("the cache of `{}` lacks its indexed commit", source.name),
        )
        .with_hint(format!("run `aam source update {}` to fetch it again", source.name)));
    }
    let (root_tree, _) = cache.commit_tree(commit_id)?;
    let snapshot = Snapshot::new(&cache, root_tree, &source.scope_path, "");
    let mut chosen = Vec::new();
    for artifact in picked {
        let (records, main_file, content_path) = catalog.artifact_files(artifact.id)?;
        let mut files = Vec::new();
        for record in records {
            let relative = match artifact.kind {
                ArtifactKind::Skill if artifact.path.is_empty() => record.path.clone(),
                ArtifactKind::Skill => record.path[artifact.path.len() + 1..].to_string(),
                _ => String::new(),
            };
            let bytes = if record.mode == "symlink" {
                if record.path != main_file {
                    tracing::warn!("`{}` is a symlink; left out of the package", record.path);
                    continue;
                }
                snapshot.read_path(&content_path)?.ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "`{}` links to a file that is not in the repository",
                        record.path
                    ))
                })?
            } else {
                let oid = Oid::from_hex(record.git_blob.as_bytes())
                    .map_err(|_| Error::internal("stored blob id is not hex"))?;
                let bytes = cache.read_blob(oid)?;
                if blake3::hash(&bytes).to_hex().as_str() != record.blake3 {
                    return Err(Error::new(
                        ErrorCode::CacheCorrupted,
                        format!("`{}` in the cache does not match the catalog", record.path),
                    )
                    .with_hint(format!("run `aam source update {}` to fetch it again", source.name)));
                }
                bytes
            };
            files.push((relative, bytes, record.mode == "executable"));
        }
        chosen.push(Chosen {
            kind: artifact.kind,
            name: artifact.name,
            description: artifact.description,
            source_path: artifact.path,
            artifact_id: Some(artifact.id),
            files,
        });
    }
    Ok(Gathered {
        chosen,
        provenance: Provenance {
            source_type: Some("remote_git".to_string()),
            source_url: Some(source.url.clone()),
            source_ref: source.ref_name.clone().or(source.resolved_ref.clone()),
            source_path: Some(source.scope_path.clone()).filter(|p| !p.is_empty()),
            source_commit: Some(commit),
            fetched_at: source.fetched_at.clone(),
        },
        default_name: manifest::suggest_package_name(&source.name).unwrap_or_else(|| "package".to_string()),
        origin_label: format!("source {}", source.name),
        project_root: None,
    })
}

/// `base`, or `base-2`, `base-3`... when taken.
fn unique_name(base: &str, taken: &[&str]) -> String {
    if !taken.contains(&base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|c| !taken.contains(&c.as_str()))
        .unwrap_or_default()
}

/// Writes a package folder atomically: staged next to `dir`, then renamed into place.
fn write_package_dir(dir: &Path, manifest: &Manifest, files: &BTreeMap<String, (Vec<u8>, bool)>) -> Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    let staging = tempfile::Builder::new()
        .prefix(".aam-create-")
        .tempdir_in(parent)
        .map_err(|e| Error::io("create", parent, e))?;
    for (path, (bytes, executable)) in files {
        let target = staging.path().join(path);
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder).map_err(|e| Error::io("create", folder, e))?;
        }
        std::fs::write(&target, bytes).map_err(|e| Error::io("write", &target, e))?;
        if *executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| Error::io("write", &target, e))?;
        }
    }
    let manifest_path = staging.path().join(MANIFEST_FILE);
    std::fs::write(&manifest_path, manifest::to_yaml(manifest)).map_err(|e| Error::io("write", &manifest_path, e))?;
    if dir.exists() {
        std::fs::remove_dir(dir).map_err(|e| Error::io("replace", dir, e))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        Error::io("create", dir, e)
    })?;
    Ok(())
}

/// Refuses a manifest this code built but that does not validate.
fn check_manifest(manifest: &Manifest) -> Result<()> {
    let checked = manifest::check(&manifest::to_yaml(manifest));
    match checked.errors.first() {
        None => Ok(()),
        Some(first) => Err(invalid_manifest(&checked.errors, first)),
    }
}

fn invalid_manifest(errors: &[Issue], first: &Issue) -> Error {
    let at = if first.field.is_empty() {
        String::new()
    } else {
        format!("`{}` ", first.field)
    };
    let more = if errors.len() > 1 {
        format!(" (and {} more problems)", errors.len() - 1)
    } else {
        String::new()
    };
    Error::new(
        ErrorCode::ManifestInvalid,
        format!("the manifest is invalid: {at}{}{more}", first.message),
    )
    .with_hint("run `aam pkg validate` to see every problem")
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

type Validation = (manifest::Checked, Vec<Issue>, Vec<Issue>);

fn issue(field: impl Into<String>, message: impl Into<String>) -> Issue {
    Issue {
        field: field.into(),
        message: message.into(),
    }
}

fn read_manifest_text(dir: &Path) -> Result<String> {
    let path = dir.join(MANIFEST_FILE);
    std::fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::new(
                ErrorCode::ManifestInvalid,
                format!("`{}` has no `{MANIFEST_FILE}`", dir.display()),
            )
            .with_hint("create one with `aam pkg init` or `aam pkg create`")
        } else {
            Error::io("read", &path, e)
        }
    })
}

/// Checks a package folder: the manifest, that artifacts exist, and checksums.
fn validate_dir(dir: &Path) -> Result<Validation> {
    let checked = manifest::check(&read_manifest_text(dir)?);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if let Some(manifest) = &checked.manifest {
        for (i, (kind, artifact)) in manifest.artifacts.all().enumerate() {
            let field = format!("artifacts.{}[{}].path", kind.plural(), position(manifest, kind, i));
            let path = dir.join(&artifact.path);
            match kind {
                ArtifactKind::Skill if !path.is_dir() => errors.push(issue(
                    field,
                    format!("`{}` is not a folder in the package", artifact.path),
                )),
                ArtifactKind::Skill if !path.join("SKILL.md").is_file() => {
                    warnings.push(issue(field, format!("`{}` has no SKILL.md", artifact.path)))
                }
                ArtifactKind::Skill => {}
                _ if !path.is_file() => errors.push(issue(
                    field,
                    format!("`{}` is not a file in the package", artifact.path),
                )),
                _ => {}
            }
        }
        let files = layout::package_files(dir)?;
        let actual = layout::checksums(&files)?;
        if let Some(recorded) = &manifest.file_checksums {
            for (path, digest) in &recorded.files {
                match actual.get(path) {
                    None => warnings.push(issue(
                        format!("file_checksums.files.{path}"),
                        "the file is missing; `aam pkg pack` recomputes checksums",
                    )),
                    Some(now) if now != digest => warnings.push(issue(
                        format!("file_checksums.files.{path}"),
                        "the file changed since the checksum was recorded; `aam pkg pack` recomputes checksums",
                    )),
                    Some(_) => {}
                }
            }
            for path in actual.keys().filter(|p| !recorded.files.contains_key(*p)) {
                warnings.push(issue(
                    "file_checksums.files",
                    format!("`{path}` has no checksum yet; `aam pkg pack` adds it"),
                ));
            }
        }
    }
    Ok((checked, errors, warnings))
}

/// Checks an archive and returns its manifest; any problem is an error.
pub(crate) fn validate_archive_bytes(bytes: &[u8]) -> Result<Manifest> {
    let (checked, errors, _) = validate_archive(bytes)?;
    let all_errors: Vec<Issue> = checked.errors.iter().cloned().chain(errors).collect();
    if let Some(first) = all_errors.first() {
        return Err(invalid_manifest(&all_errors, first));
    }
    checked
        .manifest
        .ok_or_else(|| Error::internal("validated manifest missing"))
}

/// Checks an archive: entries, manifest, and that every checksum matches what is inside.
fn validate_archive(bytes: &[u8]) -> Result<Validation> {
    let checked = manifest::check(&archive::manifest_text(bytes)?);
    let mut errors = Vec::new();
    if let Some(manifest) = &checked.manifest {
        let staging = tempfile::tempdir().map_err(|e| Error::io("create", Path::new("temporary folder"), e))?;
        let root = staging.path().join("package");
        archive::unpack(bytes, &root)?;
        let actual = layout::checksums(&layout::package_files(&root)?)?;
        let recorded = manifest
            .file_checksums
            .as_ref()
            .map(|c| c.files.clone())
            .unwrap_or_default();
        if recorded != actual {
            for (path, digest) in &actual {
                if recorded.get(path) != Some(digest) {
                    errors.push(issue(
                        format!("file_checksums.files.{path}"),
                        "does not match the file in the archive",
                    ));
                }
            }
            for path in recorded.keys().filter(|p| !actual.contains_key(*p)) {
                errors.push(issue(
                    format!("file_checksums.files.{path}"),
                    "names a file the archive does not contain",
                ));
            }
        }
        for (kind, artifact) in manifest.artifacts.all() {
            let present = match kind {
                ArtifactKind::Skill => actual.keys().any(|p| p.starts_with(&format!("{}/", artifact.path))),
                _ => actual.contains_key(&artifact.path),
            };
            if !present {
                errors.push(issue(
                    format!("artifacts.{}", kind.plural()),
                    format!("`{}` is not in the archive", artifact.path),
                ));
            }
        }
    }
    Ok((checked, errors, Vec::new()))
}

/// The index of the `i`-th artifact overall within its own type's list.
fn position(manifest: &Manifest, kind: ArtifactKind, overall: usize) -> usize {
    let before: usize = ArtifactKind::ALL
        .iter()
        .take_while(|k| **k != kind)
        .map(|k| manifest.artifacts.of(*k).len())
        .sum();
    overall - before
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

/// Validates a package folder and builds its archive in memory.
pub(crate) fn pack_dir(dir: &Path) -> Result<(Vec<u8>, Manifest, u64)> {
    let (checked, errors, _) = validate_dir(dir)?;
    let all_errors: Vec<Issue> = checked.errors.iter().cloned().chain(errors).collect();
    if let Some(first) = all_errors.first() {
        return Err(invalid_manifest(&all_errors, first));
    }
    let mut manifest = checked
        .manifest
        .ok_or_else(|| Error::internal("validated manifest missing"))?;
    let files = layout::package_files(dir)?;
    manifest.file_checksums = Some(FileChecksums {
        algorithm: "blake3".to_string(),
        files: layout::checksums(&files)?,
    });
    let file_count = files.iter().filter(|f| f.path != MANIFEST_FILE).count() as u64 + 1;
    let bytes = archive::pack(&files, &manifest::to_yaml(&manifest))?;
    Ok((bytes, manifest, file_count))
}

/// `name-1.0.0.aam`, `scope-name-1.0.0.aam` for `@scope/name`.
fn archive_file_name(manifest: &Manifest) -> String {
    let flat = manifest.name.trim_start_matches('@').replace('/', "-");
    format!("{flat}-{}.aam", manifest.version)
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
        let registry = open_registry(&setting)?;
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
