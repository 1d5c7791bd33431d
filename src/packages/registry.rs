//! The local package registry: a folder of immutable, published archives.
//!
//! ```text
//! <root>/aam-registry.json                      marker: {"format": 1}
//! <root>/index.json                             every package: description, dist-tags, versions
//! <root>/packages/<name>/<version>/package.aam   the archive
//! <root>/packages/<name>/<version>/metadata.json its checksum, size, artifacts, dependencies
//! ```
//!
//! Publishing takes an exclusive lock on `<root>/.lock`, refuses a version that
//! exists, writes the archive and its metadata, then updates the one entry of the
//! index that changed; every file lands atomically.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::manifest::{Manifest, ManifestArtifacts};
use crate::atomic;
use crate::catalog::RegistryPackageRecord;
use crate::config::RegistrySetting;
use crate::error::{Error, ErrorCode, Result};
use crate::scan::ArtifactKind;

const MARKER: &str = "aam-registry.json";
const INDEX: &str = "index.json";

/// Largest `index.json` read (tens of thousands of versions fit in far less).
const MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;
const FORMAT: u32 = 1;

/// A local registry folder.
#[derive(Debug, Clone)]
pub struct Registry {
    root: PathBuf,
}

/// `index.json`: every package in the registry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegistryIndex {
    /// Layout version.
    pub format: u32,
    /// Packages by name.
    pub packages: BTreeMap<String, PackageEntry>,
}

/// One package in the index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PackageEntry {
    /// Description of the newest version.
    pub description: String,
    /// Tag to version (`latest` always present).
    pub dist_tags: BTreeMap<String, String>,
    /// Published versions.
    pub versions: BTreeMap<String, VersionEntry>,
}

/// One published version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct VersionEntry {
    /// Archive path relative to the registry root.
    pub archive: String,
    /// blake3 of the archive (hex).
    pub checksum: String,
    /// Archive size in bytes.
    pub size: u64,
    /// Description of this version.
    pub description: String,
    /// Which artifact types it holds.
    pub artifact_types: Vec<ArtifactKind>,
    /// Its artifacts.
    pub artifacts: ManifestArtifacts,
    /// Its dependencies: name to constraint.
    pub dependencies: BTreeMap<String, String>,
    /// When it was published (RFC 3339).
    pub published_at: String,
}

/// The index of a registry with no packages.
fn empty_index() -> RegistryIndex {
    RegistryIndex {
        format: FORMAT,
        packages: BTreeMap::new(),
    }
}

/// The text of an index with no packages, as `write_index` writes it.
fn empty_index_text() -> String {
    serde_json::to_string_pretty(&empty_index()).unwrap_or_default()
}

/// Removes what a killed `registry init` left in `root` (it has no marker):
/// the temporaries of the marker and the index, and the index init writes. Only when the folder holds nothing else: a folder with anything
/// of the user's in it is left as it is.
fn remove_interrupted_init(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    let temporary = |name: &str| {
        [MARKER, INDEX]
            .iter()
            .any(|file| name.starts_with(&format!(".{file}.aam-")) && name.ends_with(".tmp"))
    };
    let mut left = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let plain = entry.file_type().is_ok_and(|t| t.is_file());
        // Exactly the index init writes: any other file of that name is the user's.
        let empty_index = name == INDEX
            && crate::paths::read_plain(&entry.path(), MAX_INDEX_BYTES)
                .ok()
                .flatten()
                .is_some_and(|bytes| bytes == empty_index_text().as_bytes());
        if !(plain && (temporary(&name) || empty_index)) {
            return;
        }
        left.push(entry.path());
    }
    for path in left {
        if let Err(e) = std::fs::remove_file(&path) {
            tracing::debug!(path = %path.display(), "could not remove a killed init's file: {e}");
        }
    }
}

impl Registry {
    /// Makes `root` a registry. An existing registry is kept as it is; a folder
    /// with other content needs `force`.
    pub fn init(root: &Path, force: bool) -> Result<Self> {
        if root.join(MARKER).exists() {
            let registry = Self::open(root)?;
            // Made by an aam that wrote the marker first, killed before the index.
            if !root.join(INDEX).exists() && !root.join("packages").exists() {
                registry.write_index(&empty_index())?;
            }
            return Ok(registry);
        }
        remove_interrupted_init(root);
        let occupied = std::fs::read_dir(root).map(|mut d| d.next().is_some()).unwrap_or(false);
        if occupied && !force {
            return Err(Error::new(
                ErrorCode::RegistryInvalid,
                format!("`{}` is not empty and is not a registry", root.display()),
            )
            .with_hint("choose an empty folder, or pass `--force` to create the registry there anyway"));
        }
        // Even forced, nothing of the folder is replaced: aam writes these.
        if let Some(taken) = [INDEX, "packages"]
            .into_iter()
            .find(|name| std::fs::symlink_metadata(root.join(name)).is_ok())
        {
            return Err(Error::new(
                ErrorCode::RegistryInvalid,
                format!("`{}` already holds `{taken}`, which a registry keeps", root.display()),
            )
            .with_hint(format!("move `{taken}` aside, or choose another folder")));
        }
        // The marker lands last: a folder with it is a whole registry.
        let registry = Self {
            root: root.to_path_buf(),
        };
        registry.write_index(&empty_index())?;
        atomic::write_file(&root.join(MARKER), format!("{{\"format\": {FORMAT}}}\n").as_bytes())?;
        Ok(registry)
    }

    /// Opens the registry at `root`.
    pub fn open(root: &Path) -> Result<Self> {
        if !root.is_dir() {
            return Err(Error::new(
                ErrorCode::RegistryInvalid,
                format!("`{}` is not a folder on this machine", root.display()),
            )
            .with_hint("check the path, or create a registry there with `aam registry init <path>`"));
        }
        if !root.join(MARKER).is_file() {
            return Err(Error::new(
                ErrorCode::RegistryInvalid,
                format!("`{}` is not an aam registry (no `{MARKER}`)", root.display()),
            )
            .with_hint("create one with `aam registry init <path>`"));
        }
        Ok(Self {
            root: root.to_path_buf(),
        })
    }

    /// The registry folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What `index.json` is on disk: its size, change times and inode (a
    /// publish replaces it by renaming a new file over it), `None` when it
    /// cannot be told. Taken before reading the index, a stamp that differs
    /// later means the index changed since.
    pub fn index_stamp(&self) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(self.root.join(INDEX)).ok()?;
        Some(format!(
            "{}:{}.{}:{}.{}:{}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
            meta.ino()
        ))
    }

    /// Reads `index.json`: a plain file (never read through a link) of at
    /// most [`MAX_INDEX_BYTES`].
    pub fn index(&self) -> Result<RegistryIndex> {
        let path = self.root.join(INDEX);
        let text = match crate::paths::read_plain(&path, MAX_INDEX_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(Error::io("read", &path, std::io::ErrorKind::NotFound.into())),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(Error::new(
                    ErrorCode::RegistryInvalid,
                    format!("the registry index `{}` is refused: {e}", path.display()),
                )
                .with_hint("a registry's index.json is a plain file aam writes; restore it from a backup"));
            }
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        serde_json::from_slice(&text).map_err(|e| {
            Error::new(
                ErrorCode::RegistryInvalid,
                format!("the registry index `{}` is damaged: {e}", path.display()),
            )
            .with_hint("restore it from a backup; the archives and their metadata.json files are intact")
        })
    }

    /// Reads `index.json` and checks every package name and version in it (a
    /// name or version that is not one is `AAM_REGISTRY_INVALID`, naming it),
    /// that each archive is where publish files it, and that each dist-tag
    /// names a listed version: what `registry add` asks before it configures
    /// anything.
    pub fn checked_index(&self) -> Result<RegistryIndex> {
        let index = self.index()?;
        if index.format != FORMAT {
            return Err(Error::new(
                ErrorCode::RegistryInvalid,
                format!(
                    "the registry index `{}` has layout {}, which this aam does not read (it reads {FORMAT})",
                    self.root.join(INDEX).display(),
                    index.format
                ),
            )
            .with_hint("use the aam that made the registry, or upgrade aam"));
        }
        for (name, package) in &index.packages {
            let bad = |what: String, why: String| {
                Error::new(
                    ErrorCode::RegistryInvalid,
                    format!("the registry index lists {what}: {why}"),
                )
                .with_hint("the registry was changed by hand or is not one aam made; restore its index.json")
            };
            super::manifest::check_package_name(name).map_err(|why| bad(format!("package `{name}`"), why))?;
            // The index steers the resolver: a dependency it gives must be one a manifest could.
            for (version, entry) in &package.versions {
                for (dependency, constraint) in &entry.dependencies {
                    let what = || format!("`{name}@{}`", crate::error::quoted(version));
                    super::manifest::check_package_name(dependency)
                        .map_err(|why| bad(what(), format!("its dependency: {why}")))?;
                    super::manifest::parse_constraint(constraint)
                        .map_err(|why| bad(what(), format!("its dependency `{dependency}`: {why}")))?;
                }
            }
            for version in package.versions.keys().chain(package.dist_tags.values()) {
                semver::Version::parse(version)
                    .map_err(|e| bad(format!("`{name}@{version}`"), format!("not a version ({e})")))?;
            }
            // Where publish files every archive, and nowhere else.
            for (version, entry) in &package.versions {
                let filed = format!("packages/{name}/{version}/package.aam");
                if entry.archive != filed {
                    let why = format!(
                        "its archive is `{}`, not `{filed}`",
                        crate::error::quoted(&entry.archive)
                    );
                    return Err(bad(format!("`{name}@{version}`"), why));
                }
            }
            for (tag, version) in &package.dist_tags {
                if let Err(why) = check_tag(tag) {
                    return Err(bad(
                        format!("`{name}`"),
                        format!("its tag `{}` {why}", crate::error::quoted(tag)),
                    ));
                }
                if !package.versions.contains_key(version) {
                    return Err(bad(
                        format!("`{name}`"),
                        format!("its tag `{tag}` names {version}, which it does not list"),
                    ));
                }
            }
        }
        Ok(index)
    }

    fn write_index(&self, index: &RegistryIndex) -> Result<()> {
        let text = serde_json::to_string_pretty(index).map_err(|e| Error::internal(format!("index: {e}")))?;
        atomic::write_file(&self.root.join(INDEX), text.as_bytes())
    }

    /// Publishes `archive` (whose manifest is `manifest`) under `tag`. With
    /// `dry_run`, checks everything and writes nothing.
    pub fn publish(&self, archive: &[u8], manifest: &Manifest, tag: &str, dry_run: bool) -> Result<VersionEntry> {
        let _lock = self.lock()?;
        let mut index = self.checked_index()?;
        let name = &manifest.name;
        let version = &manifest.version;
        super::manifest::published_version(version).map_err(|why| {
            Error::new(
                ErrorCode::ManifestInvalid,
                format!("`{name}` cannot be published: {why}"),
            )
            .with_hint("set `version` in `aam.yaml` to a plain semantic version and pack again")
        })?;
        if index
            .packages
            .get(name)
            .is_some_and(|p| p.versions.contains_key(version))
        {
            return Err(Error::new(
                ErrorCode::VersionExists,
                format!("`{name}@{version}` is already published"),
            )
            .with_hint("published versions never change: bump `version` in `aam.yaml` and pack again"));
        }
        let folder = format!("packages/{name}/{version}");
        let entry = VersionEntry {
            archive: format!("{folder}/package.aam"),
            checksum: blake3::hash(archive).to_hex().to_string(),
            size: archive.len() as u64,
            description: manifest.description.clone(),
            artifact_types: ArtifactKind::ALL
                .into_iter()
                .filter(|k| !manifest.artifacts.of(*k).is_empty())
                .collect(),
            artifacts: manifest.artifacts.clone(),
            dependencies: manifest.dependencies.clone(),
            published_at: crate::catalog::now_timestamp(),
        };
        // A folder on the way that is a link would take the write elsewhere.
        let real_root = self.root.canonicalize().map_err(|e| Error::io("read", &self.root, e))?;
        let target = self.root.join(&folder);
        if !crate::paths::resolve_links(&target).is_some_and(|real| real.starts_with(&real_root)) {
            return Err(Error::new(
                ErrorCode::UnsafePath,
                format!("`{}` leads out of the registry through a link", target.display()),
            )
            .with_hint("a registry's package folders are plain folders aam makes; remove the link"));
        }
        if dry_run {
            return Ok(entry);
        }
        atomic::write_file(&self.root.join(&entry.archive), archive)?;
        let metadata = serde_json::json!({ "name": name, "version": version, "entry": &entry, "manifest": manifest });
        atomic::write_file(
            &self.root.join(format!("{folder}/metadata.json")),
            format!("{metadata:#}\n").as_bytes(),
        )?;
        let package = index.packages.entry(name.clone()).or_default();
        package.versions.insert(version.clone(), entry.clone());
        package.dist_tags.insert(tag.to_string(), version.clone());
        package
            .dist_tags
            .entry("latest".to_string())
            .or_insert_with(|| version.clone());
        package.description = manifest.description.clone();
        self.write_index(&index)?;
        // A publish killed mid-way left its temporary files; under the lock no
        // other write of these files is under way.
        for path in [&entry.archive, &format!("{folder}/metadata.json"), &INDEX.to_string()] {
            atomic::remove_temporaries_of(&self.root.join(path));
        }
        Ok(entry)
    }

    /// The archive bytes of a published version, checked against its checksum.
    /// The index is untrusted: the archive it names must be a plain relative
    /// path inside the registry, reached through no link, a regular file (never
    /// a link, FIFO or device) and at most the archive size limit; anything else
    /// is `AAM_REGISTRY_INVALID` and nothing outside the registry is read.
    pub fn archive(&self, entry: &VersionEntry) -> Result<Vec<u8>> {
        let path = self.root.join(&entry.archive);
        let invalid = |why: &str| {
            Error::new(
                ErrorCode::RegistryInvalid,
                format!(
                    "the registry index names archive `{}`, which aam refuses: {why}",
                    entry.archive
                ),
            )
            .with_hint(
                "the registry was changed by hand or is not one aam made; restore it, or publish the package again",
            )
        };
        crate::paths::check_relative(&entry.archive).map_err(|why| invalid(&why))?;
        let real_root = self.root.canonicalize().map_err(|e| Error::io("read", &self.root, e))?;
        let inside = path
            .parent()
            .and_then(crate::paths::resolve_links)
            .is_some_and(|real| real.starts_with(&real_root));
        if !inside {
            return Err(invalid("it leads out of the registry through a link"));
        }
        let bytes = match crate::paths::read_plain(&path, super::archive::MAX_ARCHIVE_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(Error::io("read", &path, std::io::ErrorKind::NotFound.into())),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return Err(invalid(&e.to_string())),
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        if blake3::hash(&bytes).to_hex().as_str() != entry.checksum {
            return Err(Error::new(
                ErrorCode::RegistryInvalid,
                format!("`{}` does not match the checksum the registry recorded", path.display()),
            )
            .with_hint("the registry was changed by hand; publish the package again under a new version"));
        }
        Ok(bytes)
    }

    /// Takes the registry's lock: `.lock`, a plain file opened without
    /// following a link (which would create a file elsewhere) or blocking.
    fn lock(&self) -> Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.root.join(".lock");
        let refused = || {
            Error::new(
                ErrorCode::RegistryInvalid,
                format!("`{}` is a link or not a plain file", path.display()),
            )
            .with_hint("a registry's `.lock` is an empty file aam makes; delete what is there")
        };
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP | libc::ENXIO) => refused(),
                _ => Error::io("open", &path, e),
            })?;
        if !file.metadata().map_err(|e| Error::io("open", &path, e))?.is_file() {
            return Err(refused());
        }
        file.lock().map_err(|e| Error::io("lock", &path, e))?;
        Ok(file)
    }
}

/// Keeps what the catalog mirrored of each published version whose registry
/// entry now names other bytes (`mirrored`: (package, version) to the entry
/// mirrored before): published versions never change, so a changed checksum
/// means the registry was changed by hand, and installs keep checking
/// against the checksum first seen. Returns the `name@version` of each.
pub fn keep_published(
    records: &mut [RegistryPackageRecord],
    mirrored: &std::collections::HashMap<(String, String), String>,
) -> Vec<String> {
    let checksum = |json: &str| serde_json::from_str::<VersionEntry>(json).ok().map(|e| e.checksum);
    let mut changed = Vec::new();
    for record in records.iter_mut() {
        for (version, entry) in &mut record.versions {
            let Some(before) = mirrored.get(&(record.name.clone(), version.clone())) else {
                continue;
            };
            if checksum(before) != checksum(entry) {
                changed.push(format!("{}@{version}", record.name));
                entry.clone_from(before);
            }
        }
    }
    changed
}

/// The folder of a `file://` registry URL (or a plain path).
pub fn url_to_path(url: &str) -> Result<PathBuf> {
    match url.strip_prefix("file://") {
        Some(path) if path.starts_with('/') => Ok(PathBuf::from(path)),
        Some(_) => Err(Error::invalid_argument(format!(
            "`{}` needs an absolute path: `file:///abs/path`",
            crate::sources::spec::redact(url)
        ))),
        None if url.contains("://") => Err(Error::invalid_argument(format!(
            "`{}` is not a local registry; only `file://` registries are supported",
            crate::sources::spec::redact(url)
        ))
        .with_hint("create a local registry with `aam registry init <path>`")),
        None => Ok(PathBuf::from(url)),
    }
}

/// Checks a dist-tag's name: a plain ref-like word (no control character,
/// nothing a shell or a terminal reads), and not a version or a range, which
/// `name@tag` would then no longer name.
pub fn check_tag(tag: &str) -> std::result::Result<(), String> {
    crate::sources::spec::validate_ref(tag).map_err(|_| "is not a valid tag".to_string())?;
    if super::manifest::parse_constraint(tag).is_ok() {
        return Err("reads as a version or a range, so it cannot be a tag".to_string());
    }
    Ok(())
}

impl Registry {
    /// Opens the registry a setting configures.
    pub fn configured(setting: &RegistrySetting) -> Result<Registry> {
        Registry::open(&url_to_path(&setting.url)?)
    }

    /// Every package with a `latest` version, as the catalog mirrors it, from
    /// the index as [`Registry::checked_index`] checks it.
    pub fn catalog_records(&self) -> Result<Vec<RegistryPackageRecord>> {
        let index = self.checked_index()?;
        let mut records = Vec::with_capacity(index.packages.len());
        for (package, entry) in &index.packages {
            let Some(latest) = entry
                .dist_tags
                .get("latest")
                .and_then(|v| entry.versions.get(v).map(|e| (v, e)))
            else {
                continue;
            };
            let (latest_version, latest_entry) = latest;
            let summary = latest_entry
                .artifacts
                .all()
                .map(|(_, a)| format!("{} {}", a.name, a.description.as_deref().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("\n");
            records.push(RegistryPackageRecord {
                name: package.clone(),
                description: entry.description.clone(),
                latest_version: latest_version.clone(),
                artifact_types: latest_entry.artifact_types.clone(),
                summary,
                versions: entry
                    .versions
                    .iter()
                    .map(|(v, e)| (v.clone(), serde_json::to_string(e).unwrap_or_default()))
                    .collect(),
                tags: entry.dist_tags.iter().map(|(t, v)| (t.clone(), v.clone())).collect(),
            });
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(version: &str) -> Manifest {
        let text = format!(
            "name: kit\nversion: {version}\ndescription: A kit\nartifacts:\n  skills:\n    - name: a\n      path: skills/a\n"
        );
        super::super::manifest::check(&text).manifest.unwrap()
    }

    #[test]
    fn publish_is_immutable_and_tags_versions() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::init(&dir.path().join("reg"), false).unwrap();
        let entry = registry
            .publish(b"archive-1", &manifest("1.0.0"), "latest", false)
            .unwrap();
        assert_eq!(entry.artifact_types, [ArtifactKind::Skill]);
        assert_eq!(registry.archive(&entry).unwrap(), b"archive-1");
        let err = registry
            .publish(b"other", &manifest("1.0.0"), "latest", false)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::VersionExists);
        registry
            .publish(b"archive-2", &manifest("2.0.0-beta.1"), "beta", false)
            .unwrap();
        let dry = registry
            .publish(b"archive-3", &manifest("3.0.0"), "latest", true)
            .unwrap();
        assert_eq!(dry.size, 9);
        let index = registry.index().unwrap();
        let kit = &index.packages["kit"];
        assert_eq!(kit.versions.len(), 2, "dry run wrote nothing");
        assert_eq!(kit.dist_tags["latest"], "1.0.0");
        assert_eq!(kit.dist_tags["beta"], "2.0.0-beta.1");
        std::fs::write(registry.root().join(&entry.archive), b"tampered").unwrap();
        assert_eq!(registry.archive(&entry).unwrap_err().code(), ErrorCode::RegistryInvalid);
    }

    #[test]
    fn a_publish_sweeps_what_a_killed_publish_of_that_version_left() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::init(&dir.path().join("reg"), false).unwrap();
        let folder = registry.root().join("packages/kit/1.0.0");
        std::fs::create_dir_all(&folder).unwrap();
        let left = [
            folder.join(".metadata.json.aam-Ab12Cd.tmp"),
            folder.join(".package.aam.aam-Ef34Gh.tmp"),
            registry.root().join(".index.json.aam-Ij56Kl.tmp"),
        ];
        for path in &left {
            std::fs::write(path, "half").unwrap();
        }
        std::fs::write(folder.join("notes.tmp"), "mine").unwrap();
        registry
            .publish(b"archive-1", &manifest("1.0.0"), "latest", false)
            .unwrap();
        for path in &left {
            assert!(!path.exists(), "{} is left", path.display());
        }
        assert!(folder.join("notes.tmp").exists());
    }

    /// An index whose archive is not where publish files it, whose tag names
    /// a version it does not list, whose dependency no manifest could give, or
    /// of another layout, is refused when read whole (`registry
    /// add`, a mirror), not only at the install that meets it.
    #[test]
    fn an_index_must_file_archives_where_publish_does_and_tag_listed_versions() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::init(&dir.path().join("reg"), false).unwrap();
        registry
            .publish(b"archive-1", &manifest("1.0.0"), "latest", false)
            .unwrap();
        let good = registry.index().unwrap();
        assert!(registry.checked_index().is_ok());
        let forge = |change: &dyn Fn(&mut RegistryIndex)| {
            let mut index = good.clone();
            change(&mut index);
            registry.write_index(&index).unwrap();
            registry.checked_index().unwrap_err()
        };
        for archive in ["../../etc/passwd", "/etc/passwd", "packages/other/1.0.0/package.aam"] {
            let err = forge(&|index| {
                index
                    .packages
                    .get_mut("kit")
                    .unwrap()
                    .versions
                    .get_mut("1.0.0")
                    .unwrap()
                    .archive = archive.into();
            });
            assert_eq!(err.code(), ErrorCode::RegistryInvalid);
            assert!(
                err.message().contains("not `packages/kit/1.0.0/package.aam`"),
                "{}",
                err.message()
            );
        }
        // Dependencies steer the resolver: names and constraints a manifest could give.
        for (dependency, constraint, says) in [
            ("../x", "*", "not a valid package name"),
            ("other", "bogus", "is no version or range"),
        ] {
            let err = forge(&|index| {
                let entry = index
                    .packages
                    .get_mut("kit")
                    .unwrap()
                    .versions
                    .get_mut("1.0.0")
                    .unwrap();
                entry.dependencies.insert(dependency.into(), constraint.into());
            });
            assert_eq!(err.code(), ErrorCode::RegistryInvalid);
            assert!(err.message().contains(says), "{}", err.message());
        }
        let err = forge(&|index| index.format = 2);
        assert!(err.message().contains("layout 2"), "{}", err.message());
        let err = forge(&|index| {
            index
                .packages
                .get_mut("kit")
                .unwrap()
                .dist_tags
                .insert("latest".into(), "9.9.9".into());
        });
        assert!(
            err.message().contains("its tag `latest` names 9.9.9"),
            "{}",
            err.message()
        );
        for tag in ["evil\nhint: run this", "1.0.0"] {
            let err = forge(&|index| {
                index
                    .packages
                    .get_mut("kit")
                    .unwrap()
                    .dist_tags
                    .insert(tag.into(), "1.0.0".into());
            });
            assert!(!err.message().contains('\n'), "{}", err.message());
            assert_eq!(err.code(), ErrorCode::RegistryInvalid);
        }
    }

    #[test]
    fn the_lock_and_a_forced_init_touch_only_what_the_registry_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::init(&dir.path().join("reg"), false).unwrap();
        // A `.lock` linked elsewhere creates nothing there; a FIFO does not block.
        let elsewhere = dir.path().join("created-by-aam");
        std::os::unix::fs::symlink(&elsewhere, registry.root().join(".lock")).unwrap();
        let err = registry.publish(b"a", &manifest("1.0.0"), "latest", true).unwrap_err();
        assert_eq!(err.code(), ErrorCode::RegistryInvalid);
        assert!(
            std::fs::symlink_metadata(&elsewhere).is_err(),
            "nothing created through the link"
        );
        std::fs::remove_file(registry.root().join(".lock")).unwrap();
        crate::paths::make_fifo(&registry.root().join(".lock"));
        let err = registry.publish(b"a", &manifest("1.0.0"), "latest", true).unwrap_err();
        assert_eq!(err.code(), ErrorCode::RegistryInvalid);
        // A forced init keeps a folder's own index.json.
        let web = dir.path().join("web");
        std::fs::create_dir(&web).unwrap();
        std::fs::write(web.join("index.json"), "{\"my\": \"data\"}").unwrap();
        let err = Registry::init(&web, true).unwrap_err();
        assert_eq!(err.code(), ErrorCode::RegistryInvalid);
        assert_eq!(
            std::fs::read_to_string(web.join("index.json")).unwrap(),
            "{\"my\": \"data\"}"
        );
        assert!(!web.join(MARKER).exists());
    }

    #[test]
    fn build_metadata_is_never_published() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::init(&dir.path().join("reg"), false).unwrap();
        registry
            .publish(b"pinned", &manifest("1.0.0"), "latest", false)
            .unwrap();
        let err = registry
            .publish(b"other", &manifest("1.0.0+zzz"), "latest", false)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ManifestInvalid);
        assert_eq!(registry.index().unwrap().packages["kit"].versions.len(), 1);
    }

    #[test]
    fn a_version_published_again_with_other_bytes_keeps_its_first_mirror() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::init(&dir.path().join("reg"), false).unwrap();
        registry.publish(b"good", &manifest("1.0.0"), "latest", false).unwrap();
        let mirrored: std::collections::HashMap<(String, String), String> = registry
            .catalog_records()
            .unwrap()
            .into_iter()
            .flat_map(|r| r.versions.into_iter().map(move |(v, e)| ((r.name.clone(), v), e)))
            .collect();
        let mut index = registry.index().unwrap();
        let kit = index.packages.get_mut("kit").unwrap();
        kit.versions.get_mut("1.0.0").unwrap().checksum = blake3::hash(b"evil").to_hex().to_string();
        registry.write_index(&index).unwrap();
        registry.publish(b"new", &manifest("1.1.0"), "latest", false).unwrap();
        let mut records = registry.catalog_records().unwrap();
        assert_eq!(keep_published(&mut records, &mirrored), ["kit@1.0.0"]);
        let kept = &records[0].versions.iter().find(|(v, _)| v == "1.0.0").unwrap().1;
        assert_eq!(kept, &mirrored[&("kit".to_string(), "1.0.0".to_string())]);
    }

    #[test]
    fn an_index_never_leads_a_read_out_of_the_registry_or_into_a_special_file() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::init(&dir.path().join("reg"), false).unwrap();
        let entry = registry
            .publish(b"archive-1", &manifest("1.0.0"), "latest", false)
            .unwrap();
        let secret = dir.path().join("secret.aam");
        std::fs::write(&secret, b"archive-1").unwrap();
        let pointing = |archive: &str| VersionEntry {
            archive: archive.to_string(),
            ..entry.clone()
        };
        // Outside by `..`, by an absolute path, and through a linked folder.
        std::os::unix::fs::symlink(dir.path(), registry.root().join("packages/out")).unwrap();
        for archive in ["../secret.aam", secret.to_str().unwrap(), "packages/out/secret.aam"] {
            let err = registry.archive(&pointing(archive)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::RegistryInvalid, "{archive}");
        }
        // A FIFO is refused at once instead of blocking the read; a link too.
        let fifo = registry.root().join("packages/kit/1.0.0/fifo.aam");
        crate::paths::make_fifo(&fifo);
        std::os::unix::fs::symlink(&secret, registry.root().join("packages/kit/1.0.0/link.aam")).unwrap();
        for archive in ["packages/kit/1.0.0/fifo.aam", "packages/kit/1.0.0/link.aam"] {
            let err = registry.archive(&pointing(archive)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::RegistryInvalid, "{archive}");
        }
        // Nor is a package published through a linked folder.
        std::os::unix::fs::symlink(dir.path(), registry.root().join("packages/linked")).unwrap();
        let mut linked = manifest("1.0.0");
        linked.name = "linked".into();
        let err = registry.publish(b"archive", &linked, "latest", false).unwrap_err();
        assert_eq!(err.code(), ErrorCode::UnsafePath);
        assert!(!dir.path().join("1.0.0").exists(), "nothing written through the link");
        // An index naming a package or version that is not one is refused.
        let mut index = registry.index().unwrap();
        index
            .packages
            .get_mut("kit")
            .unwrap()
            .versions
            .insert("../../evil".into(), entry.clone());
        registry.write_index(&index).unwrap();
        let err = registry.checked_index().unwrap_err();
        assert!(err.message().contains("kit@../../evil"), "{}", err.message());
        // Nor is an index that is a link read.
        std::fs::rename(registry.root().join(INDEX), dir.path().join("moved.json")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("moved.json"), registry.root().join(INDEX)).unwrap();
        assert_eq!(registry.index().unwrap_err().code(), ErrorCode::RegistryInvalid);
    }

    #[test]
    fn remote_registry_urls_are_refused_without_their_credentials() {
        let err = url_to_path("https://user:pa/ss@host/reg").unwrap_err();
        assert_eq!(
            err.message(),
            "`https://***@host/reg` is not a local registry; only `file://` registries are supported"
        );
    }

    /// What a `registry init` killed at each point leaves is finished or
    /// cleared by the next one, without `--force` (it was refused as "not
    /// empty", or failed reading a missing index; found by a kill -9 round).
    #[test]
    fn init_finishes_what_a_killed_init_left() {
        let dir = tempfile::tempdir().unwrap();
        let empty = empty_index_text();
        let states: [&[(&str, &str)]; 4] = [
            &[(".aam-registry.json.aam-Ab12Cd.tmp", "")],
            &[(".index.json.aam-Zz99Yy.tmp", "{\"form")],
            &[("index.json", &empty), (".aam-registry.json.aam-Qq11Ww.tmp", "{")],
            // An older aam wrote the marker first.
            &[(MARKER, "{\"format\": 1}\n")],
        ];
        for (i, files) in states.iter().enumerate() {
            let root = dir.path().join(format!("r{i}"));
            std::fs::create_dir_all(&root).unwrap();
            for (name, text) in *files {
                std::fs::write(root.join(name), text).unwrap();
            }
            let registry = Registry::init(&root, false).unwrap();
            assert!(registry.index().unwrap().packages.is_empty(), "{i}");
            let mut names: Vec<String> = std::fs::read_dir(&root)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            assert_eq!(names, [MARKER, INDEX], "{i}");
        }
        // An index.json of the user's, even one that reads as an index, is kept
        // (a re-test helper's was replaced); so is anything beside a temporary.
        let theirs = dir.path().join("theirs");
        std::fs::create_dir_all(&theirs).unwrap();
        let wiki = "{\"format\": 3, \"packages\": {}, \"title\": \"Team wiki\"}\n";
        std::fs::write(theirs.join(INDEX), wiki).unwrap();
        assert_eq!(
            Registry::init(&theirs, false).unwrap_err().code(),
            ErrorCode::RegistryInvalid
        );
        assert_eq!(std::fs::read_to_string(theirs.join(INDEX)).unwrap(), wiki);
        let mixed = dir.path().join("mixed");
        std::fs::create_dir_all(&mixed).unwrap();
        std::fs::write(mixed.join(".index.json.aam-Ab12Cd.tmp"), "").unwrap();
        std::fs::write(mixed.join("notes.txt"), "mine").unwrap();
        assert_eq!(
            Registry::init(&mixed, false).unwrap_err().code(),
            ErrorCode::RegistryInvalid
        );
        assert!(mixed.join(".index.json.aam-Ab12Cd.tmp").exists());
    }

    #[test]
    fn init_refuses_occupied_folders_without_force() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        assert_eq!(
            Registry::init(dir.path(), false).unwrap_err().code(),
            ErrorCode::RegistryInvalid
        );
        Registry::init(dir.path(), true).unwrap();
        Registry::init(dir.path(), false).unwrap();
        assert_eq!(
            Registry::open(&dir.path().join("nope")).unwrap_err().code(),
            ErrorCode::RegistryInvalid
        );
        assert!(url_to_path("https://example.com/reg").is_err());
        assert_eq!(url_to_path("file:///tmp/r").unwrap(), PathBuf::from("/tmp/r"));
    }
}
