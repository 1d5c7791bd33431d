//! Building packages: choosing artifacts from the current project or from a
//! source's cached git objects, laying them out as a package (manifest with
//! provenance and checksums), and writing the package folder atomically.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;

use crate::catalog::{Catalog, ListedArtifact, now_timestamp};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::layout::package_path;
use crate::packages::manifest::{
    self, FileChecksums, Issue, MANIFEST_FILE, Manifest, ManifestArtifact, ManifestArtifacts, Provenance,
    artifact_file_name, check_package_name,
};
use crate::project;
use crate::scan::{self, ArtifactKind};
use crate::sources::git::{FileMode, GitCache, Oid};
use crate::sources::head::{Change, Head, WorkFile};
use crate::sources::index::Snapshot;

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

/// A package name made from a folder's name.
pub fn folder_package_name(dir: &Path) -> String {
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    package_name_from(&folder)
}

/// `name` (a folder's or a source's) as a package name: as it is when it is
/// one, else made into one, else `package`.
pub fn package_name_from(name: &str) -> String {
    check_package_name(name)
        .ok()
        .map(|_| name.to_string())
        .or_else(|| manifest::suggest_package_name(name))
        .unwrap_or_else(|| "package".to_string())
}

/// Which artifacts to take.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Every one.
    pub all: bool,
    /// Every one of these types.
    pub types: Vec<ArtifactKind>,
    /// These names or paths.
    pub artifacts: Vec<String>,
}

/// A package assembled in memory: its manifest and files.
pub struct Built {
    /// The manifest (with checksums of `files`).
    pub manifest: Manifest,
    /// Package path to (bytes, executable); `aam.yaml` not included.
    pub files: BTreeMap<String, (Vec<u8>, bool)>,
    /// What went in.
    pub included: Vec<IncludedArtifact>,
}

/// Lays gathered artifacts out as a package named `name`.
pub fn assemble(
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
pub struct Chosen {
    pub kind: ArtifactKind,
    pub name: String,
    description: Option<String>,
    /// Path in the project or repository.
    pub source_path: String,
    /// The catalog artifact, for source artifacts.
    pub artifact_id: Option<crate::catalog::ArtifactId>,
    /// (path relative to the artifact, bytes, executable).
    files: Vec<(String, Vec<u8>, bool)>,
}

pub struct Gathered {
    pub chosen: Vec<Chosen>,
    pub provenance: Provenance,
    pub default_name: String,
    origin_label: String,
    pub project_root: Option<String>,
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

/// Picks artifacts by `all`, `types` and names (or paths) among those of
/// `within` (a source or folder, as an error names it); unknown names are an
/// error naming each of them.
fn choose<T>(
    items: Vec<T>,
    input: &Selection,
    within: &str,
    key: impl Fn(&T) -> (ArtifactKind, &str, &str),
) -> Result<Vec<T>> {
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
            format!("no artifact named {} in {within}", names.join(", ")),
        )
        .with_hint(hint));
    }
    // A name two artifacts share (and no path) means neither in particular.
    for wanted in &input.artifacts {
        let named: Vec<&str> = items
            .iter()
            .map(&key)
            .filter(|(_, name, path)| name == wanted && path != wanted)
            .map(|(_, _, path)| path)
            .collect();
        if named.len() > 1 && !items.iter().any(|i| key(i).2 == wanted.as_str()) {
            let paths: Vec<String> = named.iter().map(|p| format!("`{p}`")).collect();
            return Err(Error::new(
                ErrorCode::ArtifactAmbiguous,
                format!("`{wanted}` names {} artifacts in {within}", named.len()),
            )
            .with_hint(format!("name one of them by its path: {}", paths.join(", "))));
        }
    }
    Ok(items
        .into_iter()
        .filter(|i| {
            let (kind, name, path) = key(i);
            input.all || input.types.contains(&kind) || input.artifacts.iter().any(|w| w == name || w == path)
        })
        .collect())
}

/// A project instruction's main file (`AGENTS.md`, `CLAUDE.md`...) as the
/// project's own, without the sections aam installed there for other packages
/// (as `deployed`, the lock's keys, records them: `FILE#name type`), which an
/// install would refuse as forged markers; a section no package records any
/// more (`uninstall` kept it for its edits) keeps its text without its marker
/// lines. A damaged section, which cannot be told from the user's text, is
/// `AAM_CONFLICT`. Other files are the project's as they are.
fn own_bytes(
    artifact: &project::ProjectArtifact,
    file: &str,
    bytes: Vec<u8>,
    deployed: &BTreeSet<String>,
) -> Result<Vec<u8>> {
    let shared = artifact.kind == ArtifactKind::Instruction && file == artifact.main_file;
    let Some(text) = std::str::from_utf8(&bytes)
        .ok()
        .filter(|t| shared && crate::deploy::sections::forges_marker(t))
    else {
        return Ok(bytes);
    };
    let own = crate::deploy::sections::own_text(text, |name, kind| deployed.contains(&format!("{file}#{name} {kind}")));
    if crate::deploy::sections::forges_marker(&own) {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("`{file}` holds a damaged aam section (its marker lines are doubled, moved or unmatched)"),
        )
        .with_hint("fix the `<!-- BEGIN AAM: ... -->`/`<!-- END AAM: ... -->` lines by hand so each appears once, or remove the section, then package again"));
    }
    Ok(own.into_bytes())
}

/// Reads the chosen artifacts of the project folder `root` (canonical): the
/// project's own artifacts, as `selection` picks them; those
/// whose main file is in `deployed` (files aam installed there from other
/// packages) are copies, not the project's own, and are left out. When `root`
/// is a git work tree's root, the provenance names `HEAD` when it holds every
/// file read as it is and no file of a chosen skill is gone since; a file new,
/// changed or deleted since is refused ([`ErrorCode::UncommittedChanges`])
/// unless `allow_dirty`, and then no commit is named.
pub fn gather_from_project(
    root: &Path,
    selection: &Selection,
    deployed: &BTreeSet<String>,
    allow_dirty: bool,
) -> Result<Gathered> {
    let mut found = project::artifacts(root)?;
    found.retain(|a| !deployed.contains(&a.main_file));
    // A shared file holding nothing but other packages' sections is theirs.
    found.retain(|a| {
        let Ok(bytes) = read_project_file(&root.join(&a.main_file), &a.main_file) else {
            return true;
        };
        let own = own_bytes(a, &a.main_file, bytes, deployed);
        let blank = own.as_ref().is_ok_and(|own| own.iter().all(u8::is_ascii_whitespace));
        if blank {
            tracing::info!(
                "left out `{}`: it holds only sections aam installed for other packages",
                a.main_file
            );
        }
        !blank
    });
    if found.is_empty() {
        return Err(Error::invalid_argument(format!("no artifacts found in `{}`", root.display()))
            .with_hint("artifacts are skills (`SKILL.md` folders), agents, prompts and instructions; see `aam source candidates --source local`"));
    }
    let within = format!("`{}`", root.display());
    let picked = choose(found, selection, &within, |a| {
        (a.kind, a.name.as_str(), a.path.as_str())
    })?;
    let mut chosen = Vec::new();
    let mut head = Head::open(root);
    // What `HEAD` does not hold as read: a file new or changed, or one gone from a skill's folder.
    let mut changes = Vec::new();
    let mut total = 0u64;
    for artifact in picked {
        let mut files = Vec::new();
        for file in &artifact.files {
            let path = root.join(file);
            let bytes = read_project_file(&path, file)?;
            total += bytes.len() as u64;
            if total > crate::packages::archive::MAX_UNPACKED_BYTES {
                return Err(Error::new(
                    ErrorCode::SourceFileTooLarge,
                    format!(
                        "the chosen artifacts' files come to more than an archive may hold unpacked ({} MiB)",
                        crate::packages::archive::MAX_UNPACKED_BYTES >> 20
                    ),
                )
                .with_hint("package fewer artifacts at once, or move large files out of their folders"));
            }
            let relative = match artifact.kind {
                ArtifactKind::Skill if artifact.path.is_empty() => file.clone(),
                ArtifactKind::Skill => file[artifact.path.len() + 1..].to_string(),
                _ => String::new(),
            };
            use std::os::unix::fs::PermissionsExt;
            let executable = std::fs::metadata(&path)
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false);
            let read = WorkFile {
                path: file,
                bytes: &bytes,
                executable,
            };
            if let Some(change) = head.as_mut().and_then(|head| head.change(&read)) {
                changes.push((file.clone(), change));
            }
            // Compared with `HEAD` as it is in the folder, packaged as the project's own.
            files.push((relative, own_bytes(&artifact, file, bytes, deployed)?, executable));
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
    if let Some(head) = &head {
        let skills: BTreeSet<&str> = chosen
            .iter()
            .filter(|c| c.kind == ArtifactKind::Skill)
            .map(|c| c.source_path.as_str())
            .collect();
        changes.extend(deleted_skill_files(root, head, &skills));
    }
    let source_commit = match head {
        None => None,
        Some(_) if !changes.is_empty() && allow_dirty => None,
        Some(_) if !changes.is_empty() => {
            changes.sort_by(|a, b| a.0.cmp(&b.0));
            return Err(uncommitted(&changes));
        }
        Some(head) => Some(head.commit().to_string()),
    };
    let folder = project::root_name(root);
    Ok(Gathered {
        chosen,
        provenance: Provenance {
            source_type: Some("local_project".to_string()),
            source_url: Some(format!("file://{}", root.display())),
            source_ref: None,
            source_path: None,
            source_commit,
            fetched_at: Some(now_timestamp()),
        },
        default_name: folder_package_name(root),
        origin_label: format!("project {folder}"),
        project_root: Some(root.display().to_string()),
    })
}

/// The files `HEAD`'s version of one of `skills` (by path) holds that are gone
/// from the work tree at `root`: the commit's files are detected as the work
/// tree's are, so a file the package would not take (a nested skill's, an
/// ignored folder's) never counts.
fn deleted_skill_files(root: &Path, head: &Head, skills: &BTreeSet<&str>) -> Vec<(String, Change)> {
    if skills.is_empty() {
        return Vec::new();
    }
    let committed = head.paths();
    let paths: Vec<&str> = committed.iter().map(String::as_str).collect();
    let mut deleted = Vec::new();
    for found in scan::detect(&paths, &BTreeMap::new(), &project::root_name(root)) {
        if found.kind != ArtifactKind::Skill || !skills.contains(found.path.as_str()) {
            continue;
        }
        for path in found.files.iter().map(|&i| paths[i]) {
            // A tree entry's name is the repository's word: only a plain
            // relative path is looked for, and only with a stat.
            if crate::paths::check_relative(path).is_ok() && root.join(path).symlink_metadata().is_err() {
                deleted.push((path.to_string(), Change::Deleted));
            }
        }
    }
    deleted
}

/// The refusal to package files the project's last commit does not hold as they are.
fn uncommitted(changes: &[(String, Change)]) -> Error {
    const NAMED: usize = 5;
    let mut named: Vec<String> = changes
        .iter()
        .take(NAMED)
        .map(|(path, change)| format!("`{path}` ({})", change.as_str()))
        .collect();
    if changes.len() > NAMED {
        named.push(format!("and {} more", changes.len() - NAMED));
    }
    Error::new(
        ErrorCode::UncommittedChanges,
        format!(
            "{} to package {} from the last commit: {}",
            plural(changes.len(), "file"),
            if changes.len() == 1 { "differs" } else { "differ" },
            named.join(", ")
        ),
    )
    .with_hint("commit the changes, so the package names the commit its files come from, or pass `--allow-dirty` to package the files as they are (its provenance then names no commit)")
}

/// Reads the chosen artifacts of a source from its cached git objects at the indexed commit.
pub fn gather_from_source(
    catalog: &Catalog,
    git_cache_dir: &Path,
    source_name: &str,
    input: &Selection,
) -> Result<Gathered> {
    let source = catalog.source_named(source_name)?;
    let Some(commit) = source.head_commit.clone() else {
        return Err(crate::sources::not_indexed(&source.name));
    };
    let listed = catalog.list_page(
        &crate::catalog::ListFilter {
            source_ids: vec![source.id],
            ..Default::default()
        },
        None,
        usize::MAX >> 1,
    )?;
    let within = format!("source `{}`", source.name);
    let picked: Vec<ListedArtifact> = choose(listed, input, &within, |a| (a.kind, a.name.as_str(), a.path.as_str()))?;
    let cache = GitCache::open(&git_cache_dir.join(&source.cache_key))
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
        let recorded = catalog.artifact_files(artifact.id)?;
        let files = read_artifact_files(&cache, &snapshot, artifact.kind, &artifact.path, recorded, &source.name)?;
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
        default_name: package_name_from(&source.name),
        origin_label: format!("source {}", source.name),
        project_root: None,
    })
}

/// Reads an artifact's files from the cache (relative path, bytes, executable),
/// each checked against the blake3 recorded for it. A symlinked main file is
/// read through its target; other symlinks are left out.
fn read_artifact_files(
    cache: &GitCache,
    snapshot: &Snapshot<'_>,
    kind: ArtifactKind,
    artifact_path: &str,
    recorded: crate::catalog::ArtifactFiles,
    source_name: &str,
) -> Result<Vec<(String, Vec<u8>, bool)>> {
    let mut files = Vec::new();
    for record in recorded.files {
        let relative = match kind {
            ArtifactKind::Skill if artifact_path.is_empty() => record.path.clone(),
            ArtifactKind::Skill => record.path[artifact_path.len() + 1..].to_string(),
            _ => String::new(),
        };
        let bytes = if record.mode == FileMode::Symlink {
            if record.path != recorded.main_file {
                tracing::warn!("`{}` is a symlink; left out of the package", record.path);
                continue;
            }
            // A link not followed (out of the repository, or to no file) has
            // no text of its own to install: its bytes are only where it points.
            let followed = recorded.content_path != recorded.main_file;
            followed
                .then(|| snapshot.read_path(&recorded.content_path))
                .transpose()?
                .flatten()
                .ok_or_else(|| {
                    Error::new(
                        ErrorCode::ArtifactRejected,
                        format!(
                            "`{}` is a symlink to no file in the repository: there is nothing of it to install",
                            record.path
                        ),
                    )
                    .with_hint(format!(
                        "`aam info {source_name}/{artifact_path}` shows where it points; the repository has to hold the file itself"
                    ))
                })?
        } else {
            let oid =
                Oid::from_hex(record.git_blob.as_bytes()).map_err(|_| Error::internal("stored blob id is not hex"))?;
            let bytes = cache.read_blob(oid, &record.path)?;
            if blake3::hash(&bytes).to_hex().as_str() != record.blake3 {
                return Err(Error::new(
                    ErrorCode::CacheCorrupted,
                    format!("`{}` in the cache does not match the catalog", record.path),
                )
                .with_hint(format!("run `aam source update {source_name}` to fetch it again")));
            }
            bytes
        };
        files.push((relative, bytes, record.mode == FileMode::Executable));
    }
    Ok(files)
}

/// Reads one artifact (`kind` at repository path `path`) of a cached
/// repository at `commit`, detected and read as indexing would, without the
/// catalog (a restore from a lock file on a machine that never added the
/// source). `url` and `source_name` go into the provenance.
pub fn gather_at_commit(
    cache: &GitCache,
    commit: Oid,
    source_name: &str,
    url: &str,
    kind: ArtifactKind,
    path: &str,
) -> Result<Gathered> {
    let (root_tree, _) = cache.commit_tree(commit)?;
    // The lock does not record the source's scope, and detection rules read
    // scope-relative paths (a folder named `vendor` above the scope does not
    // hide what is inside it): the whole repository first, then each folder
    // above the artifact as the scope, until one detects it.
    let mut scopes = vec![String::new()];
    let mut above = path;
    while let Some((parent, _)) = above.rsplit_once('/') {
        scopes.push(parent.to_string());
        above = parent;
    }
    let cancel = crate::cancel::Cancel::default();
    let mut found = None;
    for scope in &scopes {
        let snapshot = Snapshot::new(cache, root_tree, scope, "");
        let detection = snapshot.detect(&[path.to_string()])?;
        for artifact in snapshot.read(&detection, &crate::progress::NoProgress, &cancel) {
            let artifact = artifact?;
            if artifact.kind == kind && artifact.path == path {
                found = Some((artifact, scope));
                break;
            }
        }
        if found.is_some() {
            break;
        }
    }
    let (artifact, scope) = found.ok_or_else(|| {
        Error::new(
            ErrorCode::ArtifactNotFound,
            format!(
                "commit `{}` of `{source_name}` has no {} at `{path}`",
                crate::sources::short_id(&commit.to_string()),
                kind.as_str()
            ),
        )
        .with_hint(
            "the lock file names an artifact its commit does not hold; restore the lock file from version control",
        )
    })?;
    let recorded = crate::catalog::ArtifactFiles {
        files: artifact.files,
        main_file: artifact.main_file,
        content_path: artifact.content_path,
    };
    let snapshot = Snapshot::new(cache, root_tree, scope, "");
    let files = read_artifact_files(cache, &snapshot, kind, path, recorded, source_name)?;
    Ok(Gathered {
        chosen: vec![Chosen {
            kind,
            name: artifact.name,
            description: artifact.description,
            source_path: artifact.path,
            artifact_id: None,
            files,
        }],
        provenance: Provenance::remote_git_at(url, &commit.to_string()),
        default_name: package_name_from(source_name),
        origin_label: format!("source {source_name}"),
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

/// The name a package folder is staged under before it lands: project walks
/// never enter one, and the next write beside it deletes one a killed command left.
pub const STAGING_PREFIX: &str = ".aam-create-";

/// A file of the project to package (`shown` relative to its root): a plain
/// file, never read through a link, of at most the size aam reads from a
/// source ([`crate::sources::git::MAX_SOURCE_FILE_BYTES`]), refused before
/// it is read.
fn read_project_file(path: &Path, shown: &str) -> Result<Vec<u8>> {
    let limit = crate::sources::git::MAX_SOURCE_FILE_BYTES;
    let size = std::fs::symlink_metadata(path)
        .map_err(|e| Error::io("read", path, e))?
        .len();
    if size > limit {
        return Err(Error::new(
            ErrorCode::SourceFileTooLarge,
            format!(
                "`{shown}` is {:.1} MiB; aam packages files of at most {} MiB",
                size as f64 / 1024.0 / 1024.0,
                limit >> 20
            ),
        )
        .with_hint("move large files out of the artifact's folder, or leave that artifact out of the package"));
    }
    match crate::paths::read_plain(path, limit) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(Error::io(
            "read",
            path,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )),
        Err(e) => Err(Error::io("read", path, e)),
    }
}

/// Writes a package folder: staged next to `dir`, then renamed into place in
/// one step. An existing empty `dir` (the working directory, say) stays where
/// it is, so a shell inside it keeps seeing it: it receives the staged entries
/// one by one, never over one that appeared meanwhile, the manifest last (a
/// killed write leaves no `aam.yaml`: nothing takes the folder for a package).
/// Staging folders older than ten minutes beside it (a killed command's: no
/// write takes that long) are deleted first.
pub fn write_package_dir(dir: &Path, manifest: &Manifest, files: &BTreeMap<String, (Vec<u8>, bool)>) -> Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    remove_stale_staging(parent);
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
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
    let staged = staging.keep();
    let placed = match dir.exists() {
        true => fill_empty_dir(&staged, dir),
        false => std::fs::rename(&staged, dir).map_err(|e| Error::io("create", dir, e)),
    };
    if placed.is_err() {
        let _ = std::fs::remove_dir_all(&staged);
    }
    placed
}

/// Moves the entries of `staged` into the empty folder `dir`, the manifest
/// last, then removes `staged`.
fn fill_empty_dir(staged: &Path, dir: &Path) -> Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    if std::fs::read_dir(dir)
        .map_err(|e| Error::io("read", dir, e))?
        .next()
        .is_some()
    {
        return Err(not_empty(dir));
    }
    let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(staged)
        .map_err(|e| Error::io("read", staged, e))?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io("read", staged, e))?;
    names.sort_by_key(|name| name == MANIFEST_FILE);
    for name in names {
        let target = dir.join(&name);
        match renameat_with(CWD, staged.join(&name), CWD, &target, RenameFlags::NOREPLACE) {
            Ok(()) => {}
            Err(rustix::io::Errno::EXIST) => return Err(not_empty(dir)),
            Err(e) => return Err(Error::io("create", &target, e.into())),
        }
    }
    std::fs::remove_dir(staged).map_err(|e| Error::io("remove", staged, e))
}

/// The folder a new package must not be written into (or the file in its place).
pub fn not_empty(dir: &Path) -> Error {
    let what = match dir.is_dir() {
        true => "exists and is not empty",
        false => "exists and is not a folder",
    };
    Error::new(ErrorCode::Conflict, format!("`{}` {what}", dir.display()))
        .with_hint("pass `--output-dir` with a new folder, or remove that one")
}

/// Deletes the staging folders a killed [`write_package_dir`] left in
/// `parent` (folders, never through a link, older than ten minutes).
fn remove_stale_staging(parent: &Path) {
    let stale = |meta: &std::fs::Metadata| {
        meta.modified()
            .is_ok_and(|t| t.elapsed().unwrap_or_default() > std::time::Duration::from_secs(600))
    };
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let staged = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(STAGING_PREFIX));
        let folder = entry.metadata().ok().filter(|m| m.is_dir() && stale(m));
        if staged && folder.is_some() {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => {
                    tracing::info!(path = %entry.path().display(), "removed a package folder a killed command left half made")
                }
                Err(e) => {
                    tracing::debug!(path = %entry.path().display(), "could not remove a stale staging folder: {e}")
                }
            }
        }
    }
}

/// Refuses a manifest this code built but that does not validate.
pub fn check_manifest(manifest: &Manifest) -> Result<()> {
    let checked = manifest::check(&manifest::to_yaml(manifest));
    match checked.errors.first() {
        None => Ok(()),
        Some(first) => Err(invalid_manifest(&checked.errors, first)),
    }
}

pub fn invalid_manifest(errors: &[Issue], first: &Issue) -> Error {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_name_is_taken_as_it_is_or_made_into_one() {
        assert_eq!(package_name_from("wsh"), "wsh", "it was `package`");
        assert_eq!(package_name_from("My Skills"), "my-skills");
        assert_eq!(package_name_from("???"), "package");
    }

    fn skill(name: &str, files: &[(&str, &str)]) -> Chosen {
        Chosen {
            kind: ArtifactKind::Skill,
            name: name.to_string(),
            description: Some(format!("{name} things")),
            source_path: format!("skills/{name}"),
            artifact_id: None,
            files: files
                .iter()
                .map(|(p, b)| (p.to_string(), b.as_bytes().to_vec(), false))
                .collect(),
        }
    }

    fn gathered(chosen: Vec<Chosen>) -> Gathered {
        Gathered {
            chosen,
            provenance: Provenance::default(),
            default_name: "kit".to_string(),
            origin_label: "project here".to_string(),
            project_root: None,
        }
    }

    #[test]
    fn unknown_names_are_refused_with_the_closest_known_ones() {
        let items = vec!["pdf-tools", "review", "release-notes"];
        let selection = Selection {
            artifacts: vec!["pdf-tool".to_string()],
            ..Default::default()
        };
        let err = choose(items.clone(), &selection, "source `team`", |i| {
            (ArtifactKind::Skill, i, i)
        })
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ArtifactNotFound);
        assert_eq!(err.message(), "no artifact named `pdf-tool` in source `team`");
        assert!(err.hint().unwrap().contains("`pdf-tools`"), "{:?}", err.hint());
        let selection = Selection {
            artifacts: vec!["review".to_string()],
            types: vec![ArtifactKind::Agent],
            ..Default::default()
        };
        assert_eq!(
            choose(items, &selection, "source `team`", |i| (ArtifactKind::Skill, i, i)).unwrap(),
            vec!["review"]
        );
    }

    #[test]
    fn a_name_two_artifacts_share_is_ambiguous_and_a_path_is_not() {
        let items = vec![
            ("pr-enhance", "tools/pr-enhance.md"),
            ("pr-enhance", "commands/pr-enhance.md"),
        ];
        let pick = |wanted: &str| {
            let selection = Selection {
                artifacts: vec![wanted.to_string()],
                ..Default::default()
            };
            choose(items.clone(), &selection, "source `team`", |i| {
                (ArtifactKind::Prompt, i.0, i.1)
            })
        };
        let err = pick("pr-enhance").unwrap_err();
        assert_eq!(err.code(), ErrorCode::ArtifactAmbiguous);
        assert!(
            err.hint().unwrap().contains("`commands/pr-enhance.md`"),
            "{:?}",
            err.hint()
        );
        assert_eq!(pick("commands/pr-enhance.md").unwrap(), vec![items[1]]);
    }

    #[test]
    fn same_named_artifacts_get_numbered_names() {
        assert_eq!(unique_name("a", &[]), "a");
        assert_eq!(unique_name("a", &["a", "a-2"]), "a-3");
    }

    #[test]
    fn assembled_packages_lay_out_files_with_checksums_that_validate() {
        let built = assemble(
            &gathered(vec![
                skill(
                    "pdf",
                    &[
                        ("SKILL.md", "---\nname: pdf\ndescription: PDFs\n---\n"),
                        ("run.sh", "echo\n"),
                    ],
                ),
                skill("pdf", &[("SKILL.md", "---\nname: pdf\ndescription: more\n---\n")]),
            ]),
            "kit",
            "1.0.0",
            None,
            Vec::new(),
        )
        .unwrap();
        let paths: Vec<&str> = built.files.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            ["skills/pdf-2/SKILL.md", "skills/pdf/SKILL.md", "skills/pdf/run.sh"]
        );
        let checksums = built.manifest.file_checksums.as_ref().unwrap();
        assert_eq!(
            checksums.files["skills/pdf/run.sh"],
            blake3::hash(b"echo\n").to_hex().to_string()
        );
        assert!(built.manifest.description.starts_with("2 artifacts from project here"));

        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("kit");
        write_package_dir(&package, &built.manifest, &built.files).unwrap();
        assert!(package.join(MANIFEST_FILE).is_file());
        let (bytes, manifest, count) = crate::packages::validate::pack_dir(&package).unwrap();
        assert_eq!((manifest.name.as_str(), count), ("kit", 4));
        crate::packages::validate::validate_archive_bytes(&bytes).unwrap();
    }

    #[test]
    fn a_package_folder_is_never_written_over_a_non_empty_one() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("kit");
        std::fs::create_dir(&package).unwrap();
        std::fs::write(package.join("mine.txt"), "keep").unwrap();
        let built = assemble(
            &gathered(vec![skill("a", &[("SKILL.md", "x\n")])]),
            "kit",
            "1.0.0",
            None,
            Vec::new(),
        )
        .unwrap();
        let refused = write_package_dir(&package, &built.manifest, &built.files).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::Conflict);
        assert_eq!(std::fs::read_to_string(package.join("mine.txt")).unwrap(), "keep");
        assert_eq!(std::fs::read_dir(&package).unwrap().count(), 1);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no staging folder is left"
        );

        // An empty folder is filled where it is: a shell inside it keeps seeing it.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let before = std::fs::metadata(&empty).unwrap();
        write_package_dir(&empty, &built.manifest, &built.files).unwrap();
        let after = std::fs::metadata(&empty).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(before.ino(), after.ino());
        assert!(empty.join(MANIFEST_FILE).is_file() && empty.join("skills/a/SKILL.md").is_file());
        std::fs::remove_dir_all(&empty).unwrap();
        std::fs::remove_dir_all(&package).unwrap();

        // A project file larger than aam packages is refused unread.
        let big = dir.path().join("big.bin");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(crate::sources::git::MAX_SOURCE_FILE_BYTES + 1).unwrap();
        let refused = read_project_file(&big, "big.bin").unwrap_err();
        assert_eq!(refused.code(), ErrorCode::SourceFileTooLarge);
        assert!(
            refused.message().contains("`big.bin` is 16.0 MiB"),
            "{}",
            refused.message()
        );

        // A staging folder a killed write left is deleted by the next write
        // beside it once ten minutes old; a recent one (a write in progress) stays.
        let (stale, live) = (dir.path().join(".aam-create-Old1"), dir.path().join(".aam-create-New1"));
        std::fs::create_dir_all(stale.join("skills/a")).unwrap();
        std::fs::create_dir_all(&live).unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::open(&stale).unwrap().set_modified(hour_ago).unwrap();
        write_package_dir(&dir.path().join("other"), &built.manifest, &built.files).unwrap();
        assert!(!stale.exists() && live.exists());
    }
}
